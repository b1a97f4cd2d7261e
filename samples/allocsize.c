/* Allocation sizes from input: a few values (forks), an absurd size, a size with 128 values. */
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    if (c == 'H') {
        char *huge = malloc((size_t)1 << 40);
        return huge == NULL ? 3 : 4;
    }
    if (c >= 0x80) {
        char *q = malloc(c);
        q[0] = 1;
        return 5;
    }
    size_t n = (c & 3) + 1;
    char *p = malloc(n);
    p[n - 1] = 7;
    return p[n - 1] + (int)n;
}
