/* an 8 KiB stack table filled at run time, read at symbolic indices */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    unsigned char a[8192];
    for (int i = 0; i < 8192; i++) a[i] = (unsigned char)(i % 251);
    unsigned k = (in[0] | (unsigned)in[1] << 8) & 8191;
    unsigned v = a[k];
    unsigned w = a[(k + 4096) & 8191];
    if (v == 250) { puts("top"); return 1; }
    if (w < v) { puts("wrap"); return 2; }
    puts("plain");
    return 0;
}
