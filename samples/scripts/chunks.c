/* Two heap records side by side: a name buffer, then a record holding a handler. The name is read
 * with read() into the first record without a bound check, so a long name runs over into the next
 * record's handler: the exploit a script looks for is a name that makes the handler "win". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct handler { void (*fn)(void); };

void win(void) { puts("You win!"); }
static void lose(void) { puts("Bye."); }

int main(void) {
    char *name = calloc(1, 24);
    struct handler *h = calloc(1, sizeof *h);
    h->fn = lose;
    puts("Name?");
    read(0, name, 64);          /* the bug: 64 bytes into a 24-byte record */
    h->fn();
    return 0;
}
