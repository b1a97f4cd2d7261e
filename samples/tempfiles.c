/* Temporary files as POSIX describes them: mkstemp replaces the template's trailing XXXXXX and
 * opens a new empty file read-write; a template without them fails with EINVAL; mkstemps keeps a
 * suffix; tmpfile gives a FILE * opened "w+". The input is spooled to a temporary file, read back
 * in reverse (as tac does with a pipe), and a line of it round-trips through tmpfile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
    char bad[] = "/tmp/spoolXXXXX";
    errno = 0;
    int r = mkstemp(bad);
    printf("short template %d %s %s\n", r, errno == EINVAL ? "EINVAL" : "other", bad);

    char name[] = "/tmp/spoolXXXXXX";
    int fd = mkstemp(name);
    if (fd < 0)
        return 9;
    printf("kept prefix %d, placeholder replaced %d\n", strncmp(name, "/tmp/spool", 10) == 0,
           strcmp(name + 10, "XXXXXX") != 0 && strlen(name) == 16);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0)
        return 8;

    char buf[16];
    ssize_t n, total = 0;
    while ((n = read(0, buf, sizeof buf)) > 0) {
        if (write(fd, buf, n) != n)
            return 7;
        total += n;
    }
    unlink(name);
    for (off_t at = total - 1; at >= 0; at--) {
        char c;
        if (lseek(fd, at, SEEK_SET) != at || read(fd, &c, 1) != 1)
            return 6;
        putchar(c == '\n' ? '|' : c ? c : '0');
    }
    char c;
    printf("\nat end %zd\n", read(fd, &c, 1));
    close(fd);

    char suffixed[] = "/tmp/cfgXXXXXX.ini";
    int fd2 = mkstemps(suffixed, 4);
    printf("suffix %s\n", fd2 >= 0 && strcmp(suffixed + strlen(suffixed) - 4, ".ini") == 0 ? "kept" : "lost");
    if (fd2 >= 0) {
        unlink(suffixed);
        close(fd2);
    }

    FILE *t = tmpfile();
    if (!t)
        return 5;
    if (lseek(0, 0, SEEK_SET) == 0)   /* stdin is a pipe: no rewind of the input */
        return 4;
    fprintf(t, "%zd:%s", total, total > 2 ? "long" : "short");
    rewind(t);
    char line[32] = "";
    if (!fgets(line, sizeof line, t))
        return 3;
    printf("tmpfile %s\n", line);
    fclose(t);
    return total & 1;
}
