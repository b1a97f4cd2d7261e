/* a write through a pointer that may designate several heap objects, then reads of each */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    int *o[3];
    for (int i = 0; i < 3; i++) { o[i] = calloc(4, sizeof(int)); }
    int *p = o[in[0] % 3];
    p[in[1] % 4] = 7;
    int hits = 0;
    for (int i = 0; i < 3; i++) hits = hits * 10 + (o[i][2] == 7) + 2 * (o[i][0] == 7);
    printf("%d\n", hits);
    return hits % 256 == 0;
}
