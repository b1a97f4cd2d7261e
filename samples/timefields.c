/* A time_t broken down by localtime and gmtime_r: a day count since 1970 read from stdin (two
   bytes) picks the date; the third byte picks the function ('g': gmtime_r). Each outcome depends
   on the calendar: a leap day, a Sunday that starts a year, or the time of day and zone printed. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    uint16_t days = 0;
    unsigned char mode = 0;
    if (read(0, &days, 2) != 2 || read(0, &mode, 1) != 1)
        return 9;
    time_t t = (time_t)days * 86400 + 3723;
    struct tm buf;
    struct tm *tm = mode == 'g' ? gmtime_r(&t, &buf) : localtime(&t);
    if (tm == NULL)
        return 3;
    if (tm->tm_mon == 1 && tm->tm_mday == 29) {
        puts("leap day");
        return 1;
    }
    if (tm->tm_wday == 0 && tm->tm_yday == 0) {
        puts(mode == 'g' ? "sunday new year (gmtime)" : "sunday new year");
        return 2;
    }
    if (days == 19000)
        printf("%02d:%02d:%02d %s %d\n", tm->tm_hour, tm->tm_min, tm->tm_sec, tm->tm_zone, tm->tm_year);
    return 0;
}
