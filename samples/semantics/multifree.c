/* free() of a pointer selected by input from an array of heap pointers (and NULL), then reads */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    int *buf[4];
    for (int i = 0; i < 3; i++) { buf[i] = malloc(sizeof(int)); *buf[i] = 10 * (i + 1); }
    buf[3] = 0;
    unsigned s = c % 4;
    free(buf[s]);
    int sum = 0;
    for (int i = 0; i < 3; i++) sum += *buf[i];
    printf("%d\n", sum);
    return (int)s;
}
