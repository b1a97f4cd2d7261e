/* atoi as strtol(s, NULL, 10) (C standard 7.22.1.4): skip white space, an optional sign, then
 * decimal digits. Exit: digits * 8 + (negative ? 4 : 0) + (value is odd ? 2 : 0) + (sign seen). */
#include "harness.h"

__attribute__((noinline)) long c_strtol(const char *s, int *digits, int *sign) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\v' || *s == '\f' || *s == '\r') s++;
    int neg = 0;
    *sign = 0;
    if (*s == '-' || *s == '+') {
        neg = *s == '-';
        *sign = 1;
        s++;
    }
    long v = 0;
    *digits = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        (*digits)++;
        s++;
    }
    return neg ? -v : v;
}

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    int digits, sign;
    long v = c_strtol(buf, &digits, &sign);
    return digits * 8 + (v < 0 ? 4 : 0) + ((v & 1) ? 2 : 0) + sign;
}
