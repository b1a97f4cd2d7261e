/* expat (Debian's libexpat.a): one XML_Parse of the input with a fixed hash salt, as the seeds'
 * expat driver (UTF-16 input, salt 17). Prints how many elements started, the longest name's
 * length and the depth left open; exits with the error code. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <expat.h>

static int depth, elements, longest;

static void XMLCALL start(void *data, const XML_Char *name, const XML_Char **attrs) {
    (void)data;
    (void)attrs;
    depth++;
    elements++;
    int n = (int)strlen(name);
    if (n > longest)
        longest = n;
}

static void XMLCALL end(void *data, const XML_Char *name) {
    (void)data;
    (void)name;
    depth--;
}

int main(int argc, char **argv) {
    char buf[64];
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0)
        n = 0;
    XML_Parser p = XML_ParserCreate(argc > 1 ? argv[1] : "UTF-8");
    if (!p)
        return 99;
    XML_SetHashSalt(p, 17);
    XML_SetElementHandler(p, start, end);
    int ok = XML_Parse(p, buf, (int)n, 1) == XML_STATUS_OK;
    int code = ok ? 0 : (int)XML_GetErrorCode(p);
    printf("%d %d %d\n", elements, longest, depth);
    XML_ParserFree(p);
    return code;
}
