#include <errno.h>
#include <math.h>
#include <stdio.h>

int main(void) {
    char buf[8] = {0};
    if (fread(buf, 1, 2, stdin) < 2) return 2;
    double x = buf[0] - 'a';
    double y = (buf[1] - '0') / 2.0;
    int code = 0;
    errno = 0;
    double r = sqrt(x);
    if (errno == EDOM) { puts("edom"); code |= 1; }
    else if (r == 3.0) { puts("square"); code |= 2; }
    if (pow(y, 3.0) > 60.0) { puts("cube"); code |= 4; }
    if (sin(x * 3.141592653589793 / 6) > 0.99) { puts("peak"); code |= 8; }
    if (floor(log(fabs(x) + 1)) == 2.0) { puts("log"); code |= 16; }
    errno = 0;
    double p = pow(x, y);
    if (errno == EDOM) { puts("powdom"); code |= 32; }
    printf("%d %d\n", (int)hypot(x, y), p > 100.0);
    return code;
}
