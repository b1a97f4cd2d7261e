/* A loop that fills 40 bytes of an 8-byte heap record. Natively (glibc) the next record starts 32
 * bytes after it, so the loop's last 8 bytes land in it: the program prints "z". */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    char *a = malloc(8);
    char *b = malloc(8);
    b[0] = 'k';
    b[1] = 0;
    for (volatile int i = 0; i < 40; i++)
        a[i] = 'z';
    puts(b);
    return 0;
}
