/* No symbolic pointers: a loop with data-dependent branches over a malloc'd copy of the input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    unsigned char *buf = malloc(2);
    memcpy(buf, in, 2);
    unsigned sum = 0;
    for (int k = 0; k < 2; k++) {
        unsigned char b = buf[k];
        for (int bit = 0; bit < 3; bit++) {
            if (b & (1u << bit)) sum += bit + 1;
            else sum ^= 1;
        }
    }
    printf("%u\n", sum);
    return sum & 7;
}
