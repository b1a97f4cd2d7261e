/* asprintf and vasprintf (through a variadic wrapper, as programs log): the formatted text in a new
 * heap object. Reads up to 3 bytes; what is printed depends only on where the first NUL is. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *format(const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

int main(void)
{
    char in[4] = {0};
    if (read(0, in, 3) < 0)
        return 2;
    char *s;
    int n = asprintf(&s, "[%s|%d]", in, (int)strlen(in));
    if (n < 0)
        return 3;
    char *t = format("%s-%s", s, in);
    if (t == NULL)
        return 4;
    size_t m = strlen(t);
    printf("%d %zu %c%c %zu\n", n, strlen(s), s[0], s[n - 1], m);
    free(s);
    free(t);
    return m > 9;
}
