/* strftime over a time picked by the input: every conversion glibc's C locale knows, flags and
   widths, %s and the zone, a buffer too small (0), an empty format. */
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(void) {
    unsigned char in[2];
    if (fread(in, 1, 2, stdin) != 2) return 2;
    time_t t = (time_t)(in[0] % 7) * 86400 * 53 + (time_t)(in[1] % 5) * 3607 * 13;
    struct tm tm, *lt;
    if (!gmtime_r(&t, &tm)) return 3;
    char buf[128];
    size_t n = strftime(buf, sizeof buf, "%a %A %b %B %C %d %e %D %F %H %I %j %m %M %p %S %u %w %y %Y", &tm);
    printf("%zu [%s]\n", n, buf);
    n = strftime(buf, sizeof buf, "%G-W%V-%u %U %W %g %T %R %r %c %x %X %% %n%t|", &tm);
    printf("%zu [%s]\n", n, buf);
    n = strftime(buf, sizeof buf, "%-d %_H %05Y %^a %#b %10A %-j %s %z %Z", &tm);
    printf("%zu [%s]\n", n, buf);
    lt = localtime(&t);
    n = strftime(buf, sizeof buf, "%Z %z %s %Ec %Oy", lt);
    printf("%zu [%s]\n", n, buf);
    buf[0] = 'x';
    n = strftime(buf, 8, "%A %B", &tm);          /* too long for 8 bytes: 0 */
    printf("%zu\n", n);
    n = strftime(buf, sizeof buf, "", &tm);
    printf("%zu [%s]\n", n, buf);
    return tm.tm_wday;
}
