/* A 32-bit FNV-1a hash of 8 input bytes compared with constants, with a printable-input check
 * first: preimage queries z3 cannot answer quickly, beside paths it can. */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    unsigned char in[8];
    if (read(0, in, 8) != 8) return 1;
    for (int i = 0; i < 8; i++)
        if (in[i] < 'a' || in[i] > 'z') { puts("bad"); return 2; }
    unsigned h = 2166136261u;
    for (int i = 0; i < 8; i++) h = (h ^ in[i]) * 16777619u;
    if (h == 0x1b2c3d4eu) { puts("key"); return 0; }
    if ((h & 0xff) == 0x42) { puts("near"); return 3; }
    puts("no");
    return 4;
}
