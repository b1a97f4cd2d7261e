/* The zone names of gmtime_r and localtime_r picked from a table by an input bit: a pointer that
   is one of two constant strings the models place in memory. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    unsigned char m = 0;
    if (read(0, &m, 1) != 1)
        return 9;
    time_t t = 86400;
    struct tm g, l;
    gmtime_r(&t, &g);
    localtime_r(&t, &l);
    const char *zones[2] = {g.tm_zone, l.tm_zone};
    const char *zone = zones[m & 1];
    printf("%s\n", zone);
    return 0;
}
