/* libxml2 (Debian's libxml2.a): htmlParseDocument over a memory buffer, as the seeds' libxml2
 * driver. Prints the root element's name; exits with wellFormed + 2 * (a document was built). */
#include <stdio.h>
#include <unistd.h>
#include <libxml/HTMLparser.h>

int main(void) {
    char buf[64];
    ssize_t n = read(0, buf, sizeof buf - 1);
    if (n < 0)
        n = 0;
    buf[n] = 0;
    htmlParserCtxtPtr ctxt = htmlCreateMemoryParserCtxt(buf, (int)n);
    if (!ctxt)
        return 99;
    htmlCtxtUseOptions(ctxt, HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET);
    htmlParseDocument(ctxt);
    int code = ctxt->wellFormed ? 1 : 0;
    if (ctxt->myDoc) {
        xmlNodePtr root = xmlDocGetRootElement(ctxt->myDoc);
        printf("%s\n", root ? (const char *)root->name : "-");
        code += 2;
        xmlFreeDoc(ctxt->myDoc);
    }
    htmlFreeParserCtxt(ctxt);
    return code;
}
