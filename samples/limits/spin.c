/* An input that makes the program loop forever: with first byte 'L' it never exits (a server-style
 * loop on a value the loop never changes); other inputs exit at once. */
#include <unistd.h>
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    volatile unsigned n = 0;
    if (in[0] == 'L') {
        while (in[1] != 0x100) n++;    /* an unsigned char is never 0x100 */
    }
    return in[0] == 'a' ? 2 : 0;
}
