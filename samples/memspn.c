/* memspn (state merging with quantifiers, Fig. 1): the length of the initial segment of a buffer
 * made of characters in a set, over a symbolic buffer of M bytes and a symbolic size n <= M.
 * stdin: byte n, then M buffer bytes. Exit status: the span (255 when n > M).
 * CHAINED: a second memspn with the set "ab" continues where the first ("a") stopped. */
#include <stddef.h>
#include <unistd.h>
#ifndef M
#define M 8
#endif
#ifndef CHARS
#define CHARS "a"
#endif

__attribute__((noinline)) int memspn(const char *s, size_t n, const char *chars) {
    const char *p = chars;
    size_t count = 0;
    while (*p && count < n) {
        if (*p == s[count]) {
            count++;
            p = chars;
        } else {
            p++;
        }
    }
    return (int)count;
}

int main(void) {
    unsigned char n = 0;
    char buf[M];
    if (read(0, &n, 1) != 1 || read(0, buf, M) != M) return 254;
    if (n > M) return 255;
    int r = memspn(buf, n, CHARS);
#ifdef CHAINED
    r += memspn(buf + r, n - r, "ab");
#endif
    return r;
}
