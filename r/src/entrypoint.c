// The package's registration: extendr's module init registers every Rust function (wrap__NAME).
void R_init_fdpriv_extendr(void *dll);

void R_init_fdpriv(void *dll) {
    R_init_fdpriv_extendr(dll);
}
