/* Heap out-of-bounds write: buf has 10 bytes, the index may reach 15 (stdin byte). */
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char i = 0;
    if (read(0, &i, 1) != 1) return 2;
    char *buf = malloc(10);
    for (int k = 0; k < 10; k++) buf[k] = 0;
    if (i < 16) buf[i] = 1;
    return buf[3];
}
