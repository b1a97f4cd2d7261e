/* A strspn-like and a strchr-like loop over a symbolic NUL-terminated string of at most M bytes.
 * stdin: M bytes (a string; byte M is always NUL). Exit status: strspn(s, "ab") * 16 + index of
 * the first 'c' (M + 1 if none). */
#include <stddef.h>
#include <unistd.h>
#ifndef M
#define M 4
#endif

__attribute__((noinline)) size_t my_strspn(const char *s, const char *accept) {
    size_t count = 0;
    for (; *s; s++, count++) {
        const char *a = accept;
        while (*a && *a != *s) a++;
        if (!*a) break;
    }
    return count;
}

__attribute__((noinline)) const char *my_strchr(const char *s, char c) {
    for (; *s; s++)
        if (*s == c) return s;
    return NULL;
}

int main(void) {
    char buf[M + 1];
    if (read(0, buf, M) != M) return 254;
    buf[M] = 0;
    size_t span = my_strspn(buf, "ab");
    const char *c = my_strchr(buf, 'c');
    return (int)(span * 16 + (c ? (size_t)(c - buf) : M + 1));
}
