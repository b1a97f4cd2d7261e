/* The file functions under their large-file names: built with -D_FILE_OFFSET_BITS=64 (as GNU
 * coreutils and most of Debian are), fopen is fopen64, open is open64 (__open_2 when fortified),
 * lseek lseek64, fstat fstat64; openat relative to the working directory. Reads the file A. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
    FILE *f = fopen("A", "r");
    if (f == NULL)
        return 10;
    int c0 = fgetc(f), c1 = fgetc(f);
    fclose(f);
    int fd = open("A", O_RDONLY);
    if (fd < 0)
        return 11;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 12;
    off_t end = lseek(fd, 0, SEEK_END);
    if (lseek(fd, 2, SEEK_SET) != 2)
        return 13;
    char b = 0;
    if (read(fd, &b, 1) != 1)
        return 14;
    close(fd);
    int d = openat(AT_FDCWD, "A", O_RDONLY);
    if (d < 0)
        return 15;
    char e = 0;
    if (read(d, &e, 1) != 1)
        return 16;
    close(d);
    printf("%lld %lld %d %d %d\n", (long long)st.st_size, (long long)end, c0 == 'x', c1 < b, e == c0);
    return c0 == c1;
}
