/* Multibyte and wide characters in the C locale, as gnulib's quoting and width code uses them:
 * mbrtowc over the input (a byte >= 0x80 is an encoding error: EILSEQ, restart), iswprint,
 * iswalpha, iswspace, wcwidth, towupper, btowc/wctob, mbsinit. Reads 3 bytes; everything printed
 * depends only on each byte's class. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include <wctype.h>

int main(void)
{
    char in[4] = {0};
    if (read(0, in, 3) != 3)
        return 2;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    int chars = 0, bad = 0, printable = 0, alpha = 0, space = 0, width = 0, upper = 0, ilseq = 0;
    for (size_t i = 0; i < 3;) {
        wchar_t w = L'#';
        errno = 0;
        size_t r = mbrtowc(&w, in + i, 3 - i, &st);
        if (r == (size_t)-1) {
            bad++;
            ilseq += errno == EILSEQ && w == L'#';
            memset(&st, 0, sizeof st);
            i++;
            continue;
        }
        if (r == 0)
            break;
        chars++;
        printable += iswprint(w) != 0;
        alpha += iswalpha(w) != 0;
        space += iswspace(w) != 0;
        int cw = wcwidth(w);
        width += cw < 0 ? 10 : cw;
        upper += towupper(w) != w;
        i += r;
    }
    int tail = mbrlen(in + 3, 1, &st) == 0 && mbrtowc(NULL, "", 0, &st) == (size_t)-2;
    int roundtrip = wctob(btowc((unsigned char)in[0])) == (in[0] & 0x80 ? EOF : (unsigned char)in[0]);
    printf("%d %d %d %d %d %d %d %d %d %d %d\n", chars, bad, ilseq, printable, alpha, space, width, upper,
           tail, roundtrip, mbsinit(&st) != 0);
    return bad > 0;
}
