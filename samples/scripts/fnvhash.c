/* A 32-bit FNV-1a hash of a 4-byte input read from stdin, compared with a constant. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    unsigned char in[4];
    if (read(0, in, 4) != 4)
        return 2;
    unsigned int h = 2166136261u;
    for (int i = 0; i < 4; i++) {
        h ^= in[i];
        h *= 16777619u;
    }
    if (h == 0xf0f98f73u)
        puts("match");
    else
        puts("no match");
    return 0;
}
