/* The environment: random bytes from getrandom and the clock. Exit 1-2: getrandom or time failed;
 * 3/4: the low bit of the first random byte; +4 when the random bytes equal the input. */
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    unsigned char in[2], b[2];
    if (read(0, in, 2) != 2) return 100;
    if (getrandom(b, 2, 0) != 2) return 1;
    time_t t = time(NULL);
    if (t == (time_t)-1) return 2;
    int r = (b[0] & 1) ? 4 : 3;
    if (b[0] == in[0] && b[1] == in[1]) r += 4;
    return r;
}
