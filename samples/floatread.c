/* Decimal and hexadecimal text to double and float (C11 7.22.1.3): strtod with its end pointer
 * and ERANGE, strtof, atof, infinities and NaNs, white space and signs. A line from stdin. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    char buf[16] = {0};
    if (!fgets(buf, sizeof buf, stdin)) return 2;
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    long used = end - buf;
    if (used == 0) { puts("no number"); return 3; }
    if (errno == ERANGE) puts(d == 0 ? "underflow" : isinf(d) ? "overflow" : "tiny");
    if (isnan(d)) { puts("nan"); return 4; }
    if (isinf(d)) { puts(d > 0 ? "+inf" : "-inf"); return 5; }
    float f = strtof(buf, NULL);
    if ((double)f != d) puts("float differs");
    if (atof(buf) != d) puts("atof differs");
    if (d * 4 == 2.0) puts("a half");
    else if (d > 0.1 && d < 0.2) puts("a tenth or so");
    else if (d == 0 && signbit(d)) puts("minus zero");
    else if (d < 0) puts("negative");
    printf("%ld %.17g\n", used, d);
    return d > 100 ? 6 : 0;
}
