/* A Collatz walk from a number given as the first argument's first byte: input-dependent trip
 * counts, up to 111 steps for inputs below 256. */
#include <stdio.h>
int main(int argc, char **argv) {
    if (argc < 2) return 1;
    unsigned n = (unsigned char)argv[1][0];
    if (n == 0) return 2;
    int steps = 0;
    while (n != 1) { n = (n & 1) ? 3 * n + 1 : n / 2; steps++; }
    printf("%d\n", steps);
    return steps > 100 ? 3 : steps > 20 ? 4 : 0;
}
