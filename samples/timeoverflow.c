/* A time_t that may not fit a struct tm: one stdin byte k gives k * 2^56 seconds, a year past
   INT_MAX for every k but 0, where localtime returns NULL (EOVERFLOW). The zone name is read
   through the returned pointer. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    signed char k = 0;
    if (read(0, &k, 1) != 1)
        return 9;
    time_t t = (time_t)k * ((time_t)1 << 56) + 59;
    struct tm *tm = localtime(&t);
    if (tm == NULL)
        return k < 0 ? 4 : 3;
    printf("%s %d\n", tm->tm_zone, tm->tm_sec);
    return 0;
}
