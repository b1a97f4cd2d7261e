/* No symbolic pointers: a small classifier over two input bytes, heap used at concrete offsets. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    int *counts = calloc(4, sizeof(int));
    for (int k = 0; k < 2; k++) {
        if (in[k] < 'a') counts[0]++;
        else if (in[k] <= 'z') counts[1]++;
        else counts[2]++;
        if (in[k] & 1) counts[3]++;
    }
    int code = counts[0] * 16 + counts[1] * 4 + counts[2];
    if (counts[3] == 2) puts("both odd");
    return code;
}
