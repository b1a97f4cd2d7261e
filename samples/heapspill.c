/* A name read into a 24-byte heap record without a bound (48 bytes), next to a record holding a
 * word the program trusts. Natively (glibc) the second record starts 32 bytes after the first, so
 * input bytes 32.. overwrite it. Exit 2 when the word reads "evil", 0 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    char *name = malloc(24);
    char *word = malloc(24);
    strcpy(word, "safe");
    if (read(0, name, 48) < 48)
        return 1;
    if (memcmp(word, "evil", 4) == 0) {
        puts("corrupted");
        return 2;
    }
    puts("fine");
    return 0;
}
