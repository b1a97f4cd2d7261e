/* realloc() of a pointer selected by input (two heap objects, a stack object, NULL), symbolic size */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    int local = 5;
    int *buf[4];
    buf[0] = malloc(sizeof(int));
    buf[1] = malloc(2 * sizeof(int));
    buf[0][0] = 11;
    buf[1][0] = 22;
    buf[2] = &local;
    buf[3] = NULL;
    unsigned s = in[0] % 4;
    size_t n = (in[1] % 4) * sizeof(int);
    int *p = realloc(buf[s], n);
    if (p == NULL) { printf("null %u\n", s); return 10; }
    if (s < 2) printf("kept %d\n", p[0]);
    else puts("fresh");
    return (int)(n / sizeof(int));
}
