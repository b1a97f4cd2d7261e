/* Luhn check digit over the decimal digits of the input (right to left, every second doubled).
 * Exit: 250 on a non-digit, else sum % 10 + 10 * (length parity). */
#include "harness.h"
int main(void) {
    char buf[M + 1]; size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    int sum = 0, dbl = 0;
    for (size_t i = n; i-- > 0;) {
        unsigned d = (unsigned char)buf[i] - '0';
        if (d > 9) return 250;
        if (dbl) { d *= 2; if (d > 9) d -= 9; }
        sum += d;
        dbl = !dbl;
    }
    return sum % 10 + 10 * (int)(n & 1);
}
