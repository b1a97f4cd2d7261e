/* an allocation of a symbolic size, written and read at input-dependent offsets */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    size_t n = in[0] % 8 + 1;
    char *p = malloc(n);
    for (size_t i = 0; i < n; i++) p[i] = (char)('a' + i);
    unsigned j = in[1] % 8;
    if (j < n && p[j] == 'c') { puts("c"); free(p); return 1; }
    if (j >= n) { puts("out"); free(p); return 2; }
    puts("in");
    free(p);
    return 0;
}
