/* A number read in the C locale whatever the program's locale, as gnulib's c_strtod does it:
 * newlocale for "C", uselocale around strtod, then back; a name that is no locale fails. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!c) return 2;
    if (newlocale(LC_ALL_MASK, "no_SUCH.locale", (locale_t)0)) return 3;
    locale_t before = uselocale(c);
    if (before == (locale_t)0) abort();
    char buf[8] = {0};
    if (read(0, buf, 3) < 0) return 4;
    char *end;
    double d = strtod(buf, &end);
    if (uselocale(before) != c) abort();
    freelocale(c);
    printf("%s %ld\n", d > 1 ? "big" : "small", (long)(end - buf));
    return before == LC_GLOBAL_LOCALE ? 0 : 5;
}
