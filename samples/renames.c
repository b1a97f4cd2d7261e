/* A value passed through the file system: a directory made for it, a file written there and
 * renamed (to a name chosen by the input), read back under its new name; then the directory is
 * emptied and removed. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
    char in[2], dir[64], a[96], b[96];
    if (read(0, in, 2) != 2)
        return 9;
    snprintf(dir, sizeof dir, "/tmp/renames.%d", (int)getpid());
    int made = mkdir(dir, 0700);
    int again = mkdir(dir, 0700) == -1 && errno == EEXIST;
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/%s", dir, in[0] == 'm' ? "moved" : "other");
    FILE *f = fopen(a, "w");
    if (f == NULL)
        return 8;
    fputc(in[1], f);
    fclose(f);
    int renamed = rename(a, b);
    struct stat st;
    int old_gone = stat(a, &st) == -1 && errno == ENOENT, is_dir = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
    f = fopen(b, "r");
    int c = f ? fgetc(f) : -2;
    if (f)
        fclose(f);
    int full = rmdir(dir) == -1 && errno == ENOTEMPTY;
    int removed = remove(b) == 0 && rmdir(dir) == 0;
    int gone = stat(dir, &st) == -1;
    printf("%d %d %d %d %d %c %d %d %d\n", made, again, renamed, old_gone, is_dir, c < 0 ? '?' : c, full, removed, gone);
    return in[0] == 'm' && c == 'z';
}
