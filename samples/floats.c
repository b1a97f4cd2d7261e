/* printf's floating-point conversions as the C standard describes fprintf (7.21.6.1): %f %e %g %a
 * and their capitals, with flags, widths and precisions, of values computed from the input: finite
 * ones, a negative zero, infinity, NaN and a subnormal; then the same through vprintf's va_list.
 * Reads 3 bytes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

int main(void)
{
    unsigned char b[3] = {0};
    ssize_t n = read(0, b, 3);
    double x = (b[0] & 3) * 0.375 - (b[1] & 1) * 2.5;
    double y = (b[2] & 1) ? INFINITY : -0.0;
    double z = (b[2] & 2) ? NAN : 1e-310;
    printf("%f|%.2f|%e|%E|%g|%G|%a|%A\n", x, x, x, x, x, x, x, x);
    printf("%+08.3f|%-10.1e|%#g|% .0f|%#.0e|%.3a|%12g|\n", x, x, x, x, x, x, x);
    printf("%f %e %G %a|%f %g %a %e\n", y, y, y, y, z, z, z, z);
    say("%zd %f %s %g %.1f\n", n, x, "and", y, x * 2);
    return (int)(x * 8) & 15;
}
