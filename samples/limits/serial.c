/* A serial-number check on the first argument (5 characters): each character weighted, sums and
 * products compared: branch conditions z3 takes some time on. */
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    if (argc < 2 || strlen(argv[1]) != 5) { puts("usage"); return 1; }
    const unsigned char *s = (const unsigned char *)argv[1];
    unsigned sum = 0, prod = 1;
    for (int i = 0; i < 5; i++) { sum += s[i] * (i + 3); prod = prod * (s[i] | 1) + i; }
    if (sum % 97 != 13) { puts("bad sum"); return 2; }
    if ((prod ^ (prod >> 13)) % 1009 == 77) { puts("valid"); return 0; }
    puts("bad product");
    return 3;
}
