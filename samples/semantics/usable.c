/* malloc_usable_size of a pointer selected from objects of several sizes (and NULL) */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    char *p[4] = {malloc(1), malloc(24), malloc(25 + in[1] % 40), NULL};
    size_t u = malloc_usable_size(p[in[0] % 4]);
    printf("%zu\n", u);
    return u > 24;
}
