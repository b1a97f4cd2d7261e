/* Twenty checks on a 10-byte input, each failure a separate call site of fail(): a script avoids
 * every call site it finds with the CFG. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) void fail(int n) {
    printf("fail %d\n", n);
    exit(1);
}

int main(void) {
    unsigned char s[10];
    if (read(0, s, 10) != 10) fail(0);
    if (s[0] != 'f') fail(1);
    if (s[1] + s[2] != 200) fail(2);
    if (s[1] - s[2] != 10) fail(3);
    if ((s[3] ^ s[0]) != 0x15) fail(4);
    if (s[4] * 3 != 297) fail(5);
    if (s[5] < 'a') fail(6);
    if (s[5] > 'e') fail(7);
    if (s[5] % 2) fail(8);
    if (s[6] != s[5] + 1) fail(9);
    if (s[7] == 0) fail(10);
    if ((s[7] & 0xf0) != 0x30) fail(11);
    if ((s[7] & 0x0f) != 7) fail(12);
    if (s[8] != s[0] - 1) fail(13);
    if (s[9] < '0') fail(14);
    if (s[9] > '9') fail(15);
    if ((s[9] - '0') * 2 != s[4] - 'a' + 14) fail(16);
    puts("flag ok");
    return 0;
}
