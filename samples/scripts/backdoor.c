/* A login of the kind angr's documentation explores first ("fauxware"): a user name and a password
 * read as eight raw bytes each, a stored account, and a master password left in by its author. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char master[] = "SOSNEAKY";

static int accepted(const char *user, const char *pass) {
    if (strcmp(pass, master) == 0)
        return 1;
    if (strcmp(user, "operator") == 0 && strcmp(pass, "k33p0ut!") == 0)
        return 1;
    return 0;
}

int main(void) {
    char user[9] = {0}, pass[9] = {0};
    puts("Username: ");
    read(0, user, 8);
    puts("Password: ");
    read(0, pass, 8);
    if (accepted(user, pass))
        puts("Welcome to the admin console, trusted user!");
    else
        puts("Go away!");
    return 0;
}
