/* Draws from glibc's generator: seeded by an input byte (glibc's default seed after a '-'), then
 * reseeded (on an 'r') from the first draw and an input byte. Reads three bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    char buf[4] = {0};
    if (read(0, buf, 3) != 3)
        return 1;
    if (buf[0] != '-')
        srand((unsigned char)buf[0]);
    int die = rand() % 6 + 1;
    if (buf[1] == 'r')
        srandom(die * 1000u + (unsigned char)buf[2]);
    long pick = random() % 100;
    if (die == 6 && pick > 50) {
        puts("jackpot");
        return 7;
    }
    printf("%d %ld\n", die, pick);
    return die % 2;
}
