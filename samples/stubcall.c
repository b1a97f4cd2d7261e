/* A call angr has no model of: nl_langinfo (angr stubs it: any return value). Its result decides
 * the exit code, so a run's predictions through it may be wrong; the other path needs no stub. */
#include <langinfo.h>
#include <unistd.h>

int main(void) {
    char c;
    if (read(0, &c, 1) != 1) return 2;
    if (c == 'x') {
        const char *codeset = nl_langinfo(CODESET);
        return codeset ? 0 : 1;
    }
    return 3;
}
