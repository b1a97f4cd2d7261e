/* A crackme of the usual kind: one line from stdin with fgets, the newline cut off, then checked
 * character by character against a key computed from a constant string. */
#include <stdio.h>
#include <string.h>

static const char secret[] = "Wh4t_a_L1ne";

static int check(const char *s) {
    if (strlen(s) != sizeof secret - 1)
        return 0;
    for (size_t i = 0; i < sizeof secret - 1; i++)
        if ((s[i] ^ (char)(i + 1)) != (secret[i] ^ (char)(i + 1)))
            return 0;
    return 1;
}

int main(void) {
    char buf[100];
    printf("Password: ");
    if (!fgets(buf, sizeof buf, stdin))
        return 2;
    buf[strcspn(buf, "\n")] = 0;
    if (check(buf)) {
        puts("Correct!");
        return 0;
    }
    puts("Wrong.");
    return 1;
}
