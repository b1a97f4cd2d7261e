/* A checker function called with an int: table lookups and arithmetic decide. A script builds a
 * call_state for check() directly. */
#include <stdio.h>
#include <stdlib.h>

static const unsigned short table[64] = {
    17, 4, 99, 23, 51, 8, 77, 3, 12, 90, 33, 61, 5, 70, 44, 28,
    81, 19, 66, 2, 57, 38, 95, 14, 73, 26, 49, 87, 9, 35, 62, 11,
    40, 93, 21, 68, 6, 84, 31, 56, 79, 15, 47, 1, 88, 24, 59, 36,
    71, 13, 97, 42, 29, 64, 7, 83, 18, 52, 75, 32, 91, 10, 45, 67};

__attribute__((noinline)) int check(unsigned int x) {
    unsigned int i = x & 63, j = (x >> 6) & 63, k = (x >> 12) & 63;
    if (x >> 18)
        return 0;
    return table[i] + 2 * table[j] + 3 * table[k] == 301 && i < j && j < k;
}

int main(int argc, char **argv) {
    unsigned int x = argc > 1 ? (unsigned int)strtoul(argv[1], 0, 10) : 0;
    puts(check(x) ? "valid" : "invalid");
    return 0;
}
