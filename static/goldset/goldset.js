// Goldset's small amount of page behaviour; htmx does the rest.
