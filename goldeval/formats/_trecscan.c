/* Fast paths for reading the two large TREC files an evaluation reads: runs and qrels.
 *
 * Why our own C: a CI job's evaluation of a million-line run spends most of its time splitting
 * lines in Python; pytrec_eval and ranx read the same files in C++ or numba. No maintained
 * library reads these files with our checks (ties, repeats, spaces trec_eval does not split
 * on, grades out of range), so this module only *scans* the common case and leaves every rule
 * to the Python readers (goldeval/formats/runfiles.py, goldeval/formats/qrels.py):
 *
 *   - it accepts only text that is all ASCII without the separators U+001C..U+001F (the
 *     characters Python's str.split() splits on and trec_eval does not);
 *   - on any line the Python reader would report, or any field it would read differently
 *     (a score float() reads but strtod does not, a grade outside -10..10, a repeated
 *     judgment, a tab in a qrels line), it returns None, and the caller reads the whole text
 *     with the Python reader, which then says what is wrong exactly as before.
 *
 * So a file is either read here with the same result the Python reader gives (tested on
 * random files in tests/goldeval/test_trecscan.py) or not read here at all.
 *
 * Line ends are "\n", "\r\n" and a lone "\r" (goldeval.formats.textfiles.universal_newlines);
 * fields are separated by runs of " \t\v\f" (what str.split() splits on in ASCII, less the
 * line ends and U+001C..U+001F).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define MAX_SCORE 3.4e38
#define MAX_FIELDS 6
#define MAX_NUMBER 64

typedef struct {
    const char *start;
    Py_ssize_t length;
} Field;

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/* The text's bytes when the fast path may read it, else NULL (not an error). */
static const char *ascii_bytes(PyObject *text, Py_ssize_t *length) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "text must be a str");
        return NULL;
    }
    if (!PyUnicode_IS_ASCII(text)) return NULL;
    const char *data = (const char *)PyUnicode_DATA(text);
    *length = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < *length; i++) {
        unsigned char c = (unsigned char)data[i];
        if (c >= 0x1c && c <= 0x1f) return NULL;
    }
    return data;
}

/* The next line of [*position, end): its bounds, and *position moved past its line end.
 * Returns 0 when there is no line left. A text ending in a line end has one more, empty,
 * line, as text.split("\n") gives; it is blank, so skipped alike. */
static int next_line(const char *data, Py_ssize_t end, Py_ssize_t *position,
                     Py_ssize_t *line_start, Py_ssize_t *line_end) {
    Py_ssize_t i = *position;
    if (i > end) return 0;
    *line_start = i;
    while (i < end && data[i] != '\n' && data[i] != '\r') i++;
    *line_end = i;
    if (i < end && data[i] == '\r' && i + 1 < end && data[i + 1] == '\n') i++;
    *position = i + 1;
    return 1;
}

/* Up to `most` fields of the line; returns how many there are (counting past `most`). */
static int split_fields(const char *data, Py_ssize_t start, Py_ssize_t end, Field *fields,
                        int most) {
    int count = 0;
    Py_ssize_t i = start;
    while (i < end) {
        while (i < end && is_space(data[i])) i++;
        if (i >= end) break;
        Py_ssize_t begin = i;
        while (i < end && !is_space(data[i])) i++;
        if (count < most) {
            fields[count].start = data + begin;
            fields[count].length = i - begin;
        }
        count++;
    }
    return count;
}

static PyObject *ascii_str(const char *start, Py_ssize_t length) {
    PyObject *result = PyUnicode_New(length, 127);
    if (result != NULL) memcpy(PyUnicode_DATA(result), start, (size_t)length);
    return result;
}

/* The score as float() reads it, when strtod reads it the same way: 1 and *value set, or 0
 * (not an error) for anything else, which the Python reader then decides. */
static int read_score(const Field *field, double *value) {
    char buffer[MAX_NUMBER + 1];
    if (field->length > MAX_NUMBER) return 0;
    for (Py_ssize_t i = 0; i < field->length; i++) {
        /* float() also takes "1_000": leave those to it. */
        if (field->start[i] == '_') return 0;
    }
    memcpy(buffer, field->start, (size_t)field->length);
    buffer[field->length] = '\0';
    char *stop = NULL;
    double parsed = PyOS_string_to_double(buffer, &stop, NULL);
    if (parsed == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (stop != buffer + field->length) return 0;
    if (!isfinite(parsed) || parsed > MAX_SCORE || parsed < -MAX_SCORE) return 0;
    *value = parsed;
    return 1;
}

/* One question's results while the run is scanned: doc ids in a list, scores and line numbers
 * in C arrays (a million of each would otherwise be a million Python objects). */
typedef struct {
    PyObject *doc_ids;
    double *scores;
    long long *lines;
    Py_ssize_t count, capacity, first_line;
} Gathered;

static int gathered_add(Gathered *g, PyObject *doc_id, double score, Py_ssize_t line) {
    if (g->count == g->capacity) {
        Py_ssize_t capacity = g->capacity ? g->capacity * 2 : 128;
        double *scores = PyMem_Realloc(g->scores, (size_t)capacity * sizeof(double));
        if (scores == NULL) return -1;
        g->scores = scores;
        long long *lines = PyMem_Realloc(g->lines, (size_t)capacity * sizeof(long long));
        if (lines == NULL) return -1;
        g->lines = lines;
        g->capacity = capacity;
    }
    if (PyList_Append(g->doc_ids, doc_id) < 0) return -1;
    g->scores[g->count] = score;
    g->lines[g->count] = line;
    g->count++;
    return 0;
}

static void gathered_free(Gathered *all, Py_ssize_t count) {
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_XDECREF(all[i].doc_ids);
        PyMem_Free(all[i].scores);
        PyMem_Free(all[i].lines);
    }
    PyMem_Free(all);
}

/* array.array(typecode, the bytes of `items`), or NULL with an exception set. */
static PyObject *as_array(PyObject *array_type, const char *typecode, const void *items,
                          Py_ssize_t size) {
    return PyObject_CallFunction(array_type, "sy#", typecode, (const char *)items, size);
}

/* scan_run(text) -> {question: (doc_ids, scores, lines, first_line)} or None.
 * Each question's results in file order, as goldeval.formats.runfiles gathers them before
 * ranking (doc_ids a list, scores an array("d"), lines an array("q")); questions in the order
 * they first appear. */
static PyObject *scan_run(PyObject *module, PyObject *text) {
    Py_ssize_t length = 0;
    const char *data = ascii_bytes(text, &length);
    if (data == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *numbers = PyDict_New(); /* question -> its index in `all` */
    PyObject *result = NULL, *array_module = NULL, *array_type = NULL;
    Gathered *all = NULL, *current_results = NULL;
    Py_ssize_t questions = 0, room = 0;
    if (numbers == NULL) return NULL;
    const char *current = NULL;
    Py_ssize_t current_length = -1;
    Py_ssize_t position = 0, line_start, line_end, number = 0;
    Field fields[MAX_FIELDS];
    while (next_line(data, length, &position, &line_start, &line_end)) {
        number++;
        int count = split_fields(data, line_start, line_end, fields, MAX_FIELDS);
        if (count == 0) continue;
        if (fields[0].start[0] == '#') continue;
        if (count < MAX_FIELDS) goto not_here;
        double score;
        if (!read_score(&fields[4], &score)) goto not_here;
        if (current == NULL || fields[0].length != current_length ||
            memcmp(fields[0].start, current, (size_t)current_length) != 0) {
            PyObject *question = ascii_str(fields[0].start, fields[0].length);
            if (question == NULL) goto error;
            PyObject *index = PyDict_GetItemWithError(numbers, question);
            if (index != NULL) {
                current_results = &all[PyLong_AsSsize_t(index)];
            } else {
                if (PyErr_Occurred()) {
                    Py_DECREF(question);
                    goto error;
                }
                if (questions == room) {
                    Py_ssize_t bigger = room ? room * 2 : 1024;
                    Gathered *grown = PyMem_Realloc(all, (size_t)bigger * sizeof(Gathered));
                    if (grown == NULL) {
                        Py_DECREF(question);
                        PyErr_NoMemory();
                        goto error;
                    }
                    all = grown;
                    room = bigger;
                }
                current_results = &all[questions];
                memset(current_results, 0, sizeof(Gathered));
                current_results->first_line = number;
                current_results->doc_ids = PyList_New(0);
                questions++; /* freed with the others from here on */
                PyObject *new_index = PyLong_FromSsize_t(questions - 1);
                int failed = current_results->doc_ids == NULL || new_index == NULL ||
                             PyDict_SetItem(numbers, question, new_index) < 0;
                Py_XDECREF(new_index);
                if (failed) {
                    Py_DECREF(question);
                    goto error;
                }
            }
            Py_DECREF(question);
            current = fields[0].start;
            current_length = fields[0].length;
        }
        PyObject *doc_id = ascii_str(fields[2].start, fields[2].length);
        if (doc_id == NULL) goto error;
        int failed = gathered_add(current_results, doc_id, score, number) < 0;
        Py_DECREF(doc_id);
        if (failed) {
            if (!PyErr_Occurred()) PyErr_NoMemory();
            goto error;
        }
    }
    array_module = PyImport_ImportModule("array");
    if (array_module == NULL) goto error;
    array_type = PyObject_GetAttrString(array_module, "array");
    if (array_type == NULL) goto error;
    result = PyDict_New();
    if (result == NULL) goto error;
    PyObject *question, *index;
    Py_ssize_t cursor = 0;
    while (PyDict_Next(numbers, &cursor, &question, &index)) { /* in first-appearance order */
        Gathered *g = &all[PyLong_AsSsize_t(index)];
        PyObject *scores = as_array(array_type, "d", g->scores, g->count * (Py_ssize_t)sizeof(double));
        PyObject *lines =
            as_array(array_type, "q", g->lines, g->count * (Py_ssize_t)sizeof(long long));
        PyObject *entry = NULL;
        if (scores != NULL && lines != NULL)
            entry = Py_BuildValue("(OOOn)", g->doc_ids, scores, lines, g->first_line);
        Py_XDECREF(scores);
        Py_XDECREF(lines);
        if (entry == NULL || PyDict_SetItem(result, question, entry) < 0) {
            Py_XDECREF(entry);
            goto error;
        }
        Py_DECREF(entry);
    }
    Py_DECREF(numbers);
    Py_DECREF(array_type);
    Py_DECREF(array_module);
    gathered_free(all, questions);
    return result;
not_here:
    Py_DECREF(numbers);
    gathered_free(all, questions);
    Py_RETURN_NONE;
error:
    Py_DECREF(numbers);
    Py_XDECREF(result);
    Py_XDECREF(array_type);
    Py_XDECREF(array_module);
    gathered_free(all, questions);
    return NULL;
}

/* A qrels grade as the Python reader takes it without a word: [+-]?[0-9]{1,9} within -10..10.
 * Returns 1 and *grade set, or 0. */
static int read_grade(const Field *field, long *grade) {
    const char *s = field->start;
    Py_ssize_t n = field->length, i = 0;
    int negative = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        i = 1;
    }
    if (n - i < 1 || n - i > 9) return 0;
    long value = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        value = value * 10 + (s[i] - '0');
    }
    if (negative) value = -value;
    if (value < -10 || value > 10) return 0;
    *grade = value;
    return 1;
}

/* scan_qrels(text) -> (grades, lines, trec_layout) or None: question -> document -> grade and
 * -> line, and whether a line had four fields (a "#" comment's too), as
 * goldeval.formats.qrels.read_qrels gives them for a file of TREC lines ("q 0 doc grade")
 * without tabs, repeats or problems. Anything else (BEIR's three columns and header, tabs,
 * repeated judgments, a bad line) is left to the Python reader. */
static PyObject *scan_qrels(PyObject *module, PyObject *text) {
    Py_ssize_t length = 0;
    const char *data = ascii_bytes(text, &length);
    if (data == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (memchr(data, '\t', (size_t)length) != NULL) Py_RETURN_NONE;
    PyObject *grades = PyDict_New(), *lines = PyDict_New();
    PyObject *small[21] = {NULL};
    if (grades == NULL || lines == NULL) goto error;
    for (int g = 0; g < 21; g++) {
        small[g] = PyLong_FromLong(g - 10);
        if (small[g] == NULL) goto error;
    }
    PyObject *documents = NULL, *document_lines = NULL; /* borrowed */
    const char *current = NULL;
    Py_ssize_t current_length = -1;
    Py_ssize_t position = 0, line_start, line_end, number = 0;
    Field fields[5];
    int trec_layout = 0;
    while (next_line(data, length, &position, &line_start, &line_end)) {
        number++;
        int count = split_fields(data, line_start, line_end, fields, 5);
        if (count == 0) continue;
        if (count != 4) {
            if (fields[0].start[0] == '#') continue;
            goto not_here;
        }
        trec_layout = 1; /* before the comment check, as the Python reader sets it */
        if (fields[0].start[0] == '#') continue;
        long grade;
        if (!read_grade(&fields[3], &grade)) goto not_here;
        if (current == NULL || fields[0].length != current_length ||
            memcmp(fields[0].start, current, (size_t)current_length) != 0) {
            PyObject *question = ascii_str(fields[0].start, fields[0].length);
            if (question == NULL) goto error;
            documents = PyDict_GetItemWithError(grades, question);
            if (documents == NULL) {
                if (PyErr_Occurred()) {
                    Py_DECREF(question);
                    goto error;
                }
                PyObject *new_documents = PyDict_New(), *new_lines = PyDict_New();
                int failed = new_documents == NULL || new_lines == NULL ||
                             PyDict_SetItem(grades, question, new_documents) < 0 ||
                             PyDict_SetItem(lines, question, new_lines) < 0;
                Py_XDECREF(new_documents);
                Py_XDECREF(new_lines);
                if (failed) {
                    Py_DECREF(question);
                    goto error;
                }
                documents = new_documents; /* held by the dicts */
                document_lines = new_lines;
            } else {
                document_lines = PyDict_GetItemWithError(lines, question);
                if (document_lines == NULL) {
                    Py_DECREF(question);
                    goto error;
                }
            }
            Py_DECREF(question);
            current = fields[0].start;
            current_length = fields[0].length;
        }
        PyObject *doc_id = ascii_str(fields[2].start, fields[2].length);
        if (doc_id == NULL) goto error;
        int present = PyDict_Contains(documents, doc_id);
        if (present != 0) {
            Py_DECREF(doc_id);
            if (present < 0) goto error;
            goto not_here; /* a repeat: the Python reader keeps the first and says so */
        }
        PyObject *line = PyLong_FromSsize_t(number);
        int failed = line == NULL || PyDict_SetItem(documents, doc_id, small[grade + 10]) < 0 ||
                     PyDict_SetItem(document_lines, doc_id, line) < 0;
        Py_XDECREF(line);
        Py_DECREF(doc_id);
        if (failed) goto error;
    }
    for (int g = 0; g < 21; g++) Py_DECREF(small[g]);
    return Py_BuildValue("(NNO)", grades, lines, trec_layout ? Py_True : Py_False);
not_here:
    for (int g = 0; g < 21; g++) Py_XDECREF(small[g]);
    Py_DECREF(grades);
    Py_DECREF(lines);
    Py_RETURN_NONE;
error:
    for (int g = 0; g < 21; g++) Py_XDECREF(small[g]);
    Py_XDECREF(grades);
    Py_XDECREF(lines);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan_run", scan_run, METH_O,
     "A TREC run's results per question in file order, or None to read it in Python."},
    {"scan_qrels", scan_qrels, METH_O,
     "A TREC qrels text's grades and lines per question, or None to read it in Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_trecscan",
    "Fast paths for reading TREC runs and qrels (see the comment at the top of the source).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__trecscan(void) { return PyModule_Create(&module); }
