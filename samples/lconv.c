/* localeconv() in the C locale: a number printed with the locale's decimal point and grouping
   (as sum and other GNU programs print sizes), the monetary fields CHAR_MAX. */
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 9;
    const struct lconv *l = localeconv();
    const char *sep = c & 1 ? l->decimal_point : l->thousands_sep;
    printf("%d%s%d|%zu|%d %d %d|%s%s\n", c >> 4, sep, c & 15, strlen(l->grouping), l->frac_digits,
           l->p_sign_posn, l->int_n_sign_posn, l->currency_symbol, l->negative_sign);
    return c & 1;
}
