/* strtok (C standard 7.24.5.8): split s into tokens separated by characters of delim; the state
 * between calls is a static pointer. Exit: number of tokens * 16 + length of the last token. */
#include "harness.h"

static char *c_strtok_save;

__attribute__((noinline)) char *c_strtok(char *s, const char *delim) {
    if (s == NULL) s = c_strtok_save;
    if (s == NULL) return NULL;
    for (; *s; s++) {                     /* skip leading delimiters */
        const char *d = delim;
        while (*d && *d != *s) d++;
        if (!*d) break;
    }
    if (!*s) {
        c_strtok_save = NULL;
        return NULL;
    }
    char *tok = s;
    for (; *s; s++) {                     /* find the end of the token */
        const char *d = delim;
        while (*d && *d != *s) d++;
        if (*d) {
            *s = '\0';
            c_strtok_save = s + 1;
            return tok;
        }
    }
    c_strtok_save = NULL;
    return tok;
}

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    int count = 0, last = 0;
    for (char *t = c_strtok(buf, " ,"); t; t = c_strtok(NULL, " ,")) {
        count++;
        last = 0;
        while (t[last]) last++;
    }
    return count * 16 + last;
}
