/* iconv as gnulib's proper_name_utf8 uses it: an author's name converted from UTF-8 to the locale's
 * charset (strictly, then with //TRANSLIT), with the name's ASCII spelling when that fails or adds
 * a '?'; plus a Latin-1 to UTF-8 conversion into a buffer too small, and a charset that is none.
 * The input byte picks the case. */
#include <errno.h>
#include <iconv.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int convert(const char *to, const char *from, const char *in, char *out, size_t room)
{
    iconv_t cd = iconv_open(to, from);
    if (cd == (iconv_t)-1)
        return -100 - errno;
    char *ip = (char *)in, *op = out;
    size_t il = strlen(in), ol = room;
    size_t r = iconv(cd, &ip, &il, &op, &ol);
    int e = r == (size_t)-1 ? errno : 0;
    *op = 0;
    iconv_close(cd);
    return r == (size_t)-1 ? -e : (int)r * 1000 + (int)(op - out) * 10 + (int)il;
}

int main(void)
{
    unsigned char c;
    if (read(0, &c, 1) != 1)
        return 2;
    char out[64];
    int r;
    switch (c % 6) {
    case 0:
        r = convert("ASCII", "UTF-8", "Torbj\xc3\xb6rn Granlund", out, sizeof out - 1);
        break;
    case 1:
        r = convert("ASCII//TRANSLIT", "UTF-8", "Niels M\xc3\xb6ller", out, sizeof out - 1);
        break;
    case 2:
        r = convert("ISO-8859-1", "UTF-8", "Torbj\xc3\xb6rn", out, sizeof out - 1);
        break;
    case 3:
        r = convert("UTF-8", "ISO-8859-1", "M\xf6ller \xe9t\xe9", out, 6);
        break;
    case 4:
        r = convert("UTF-8", "ASCII", "plain text", out, sizeof out - 1);
        break;
    default:
        r = convert("NO-SUCH-CHARSET", "UTF-8", "x", out, sizeof out - 1);
        out[0] = 0;
        break;
    }
    printf("%d %d [", c % 6, r);
    for (char *p = out; r >= 0 && *p; p++)
        printf("%02x", (unsigned char)*p);
    printf("]\n");
    return r < 0;
}
