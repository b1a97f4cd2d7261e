/* libm functions that take or give integers, or store results through pointers: frexp, modf,
 * ldexp, sincos, lgamma, ilogb, lround and remquo, on a number built from three input bytes. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>

int main(void)
{
    unsigned char b[3];
    if (fread(b, 1, 3, stdin) != 3)
        return 9;
    double x = (b[0] - '0') + (b[1] - '0') / 4.0;
    int e = 0, q = 0;
    double ip = 0.0, s = 0.0, c = 0.0;
    double fr = frexp(x, &e);
    double part = modf(x, &ip);
    double big = ldexp(x, b[2] - '0');
    sincos(x, &s, &c);
    double lg = lgamma(x + 1.0);
    double rq = remquo(x, 1.5, &q);
    printf("%d %.3f %.2f %.0f %ld %d %d %d %d\n", e, fr, part, ip, lround(big), ilogb(big + 1.0), s > c,
           (int)(lg * 10), q & 7);
    if (e == 3 && part == 0.5 && rq > 0.2)
        return 1;
    return 0;
}
