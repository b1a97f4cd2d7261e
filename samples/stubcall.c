/* A call angr has no model of: setlocale (angr stubs it: any return value). Its result decides the
 * exit code, so a run's predictions through it may be wrong; the other path needs no stub. */
#include <locale.h>
#include <unistd.h>

int main(void) {
    char c;
    if (read(0, &c, 1) != 1) return 2;
    if (c == 'x') {
        const char *loc = setlocale(LC_ALL, "C");
        return loc ? 0 : 1;
    }
    return 3;
}
