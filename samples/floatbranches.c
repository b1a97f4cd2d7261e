/* Branches on floating point computed from input bytes (no libm): int-to-double and
   double-to-float conversions, the four operations, truncation to int, and comparisons a
   tolerance or an exact value decides, in float and in double. */
#include <stdio.h>

int main(void) {
    unsigned char buf[4] = {0};
    if (fread(buf, 1, 3, stdin) < 3) return 2;
    double a = (buf[0] - 'a') / 4.0;
    double b = buf[1] * 0.1 - buf[2] / 3.0;
    float f = (float)a * 1.5f + (float)buf[2];
    int code = 0;
    if (a * a == 6.25) { puts("square"); code |= 1; }
    if (b > 0.0 && b < 1.0) { puts("unit"); code |= 2; }
    if ((int)(b * 10) == -2) { puts("trunc"); code |= 4; }
    if (f > 130.0f) { puts("big"); code |= 8; }
    if (a + 0.1 + 0.2 == a + 0.3) { puts("assoc"); code |= 16; }
    if (a / (b + 0.5) < -7.5) { puts("ratio"); code |= 32; }
    if ((float)b == (float)buf[1] * 0.1f - (float)buf[2] / 3.0f) { puts("float"); code |= 64; }
    printf("%d %d\n", (int)(a * 100), (int)f);
    return code;
}
