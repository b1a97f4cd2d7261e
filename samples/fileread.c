/* A record read from a file with fopen/fread: a magic byte, a kind and a checked length. */
#include <stdio.h>

int main(void) {
    FILE *f = fopen("input.dat", "rb");
    if (!f) { puts("cannot open"); return 9; }
    unsigned char rec[3];
    size_t n = fread(rec, 1, sizeof rec, f);
    fclose(f);
    if (n != sizeof rec) { puts("short"); return 8; }
    if (rec[0] != 'R') { puts("bad magic"); return 1; }
    switch (rec[1]) {
    case 'a': puts("kind a"); break;
    case 'b': puts("kind b"); break;
    default: puts("unknown kind"); return 2;
    }
    if (rec[2] > 100) { puts("too long"); return 3; }
    return rec[2] & 1 ? 4 : 0;
}
