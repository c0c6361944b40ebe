//! [`Config::own_files`] and the warnings about those under a root.
#![cfg(feature = "servlets")]

use super::*;

#[test]
fn own_files_name_every_file_brisk_reads_and_where_it_lies() {
    let dir = TempDir::new();
    dir.write(
        "public/pw/htpasswd",
        "alice:$2y$04$d2sgzZGxYA3G8ud2X2zTCOXf0mg3/fL.SVIjjlIrQLGeRPe9O7FcG\n",
    );
    dir.write("public/servlets/a.lua", "");
    dir.write("public/servlets/lib/b.lua", "");
    dir.write("public/servlets/readme.txt", "");
    dir.write("types", "text/x-a a\n");
    let file = dir.write(
        "public/site.toml",
        "root = \".\"\n[static]\nmime_types = \"../types\"\n\
         [[auth]]\npath = \"/p/\"\nrealm = \"R\"\nhtpasswd = \"pw/htpasswd\"\n\
         [servlets]\nenable = true\n[log]\nerror = \"../error.log\"\n",
    );
    let c = config(&["--config", file.to_str().unwrap()]);
    let real = |p: &str| std::fs::canonicalize(dir.path().join(p)).unwrap();
    let mut got: Vec<(PathBuf, String)> = c.own_files();
    got.sort();
    let mut want = vec![
        (file.clone(), "the configuration file".to_string()),
        (dir.path().join("error.log"), "log.error".to_string()),
        (real("types"), "static.mime_types".to_string()),
        (real("public/pw/htpasswd"), "auth[1].htpasswd".to_string()),
        (
            real("public/servlets/a.lua"),
            "servlets: a servlet".to_string(),
        ),
        (
            real("public/servlets/lib/b.lua"),
            "servlets: a servlet".to_string(),
        ),
    ];
    want.sort();
    // (Paths as the configuration holds them: compare them canonical.)
    let canon = |v: &[(PathBuf, String)]| -> Vec<(PathBuf, String)> {
        let mut v: Vec<_> = v
            .iter()
            .map(|(p, w)| {
                let p = std::fs::canonicalize(p).unwrap_or_else(|_| {
                    std::fs::canonicalize(p.parent().unwrap())
                        .unwrap()
                        .join(p.file_name().unwrap())
                });
                (p, w.clone())
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(canon(&got), canon(&want));
    // Only the configuration and the password file lie under the root
    // among those the root should not hold.
    let warnings = c.own_files_under_roots();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("(the configuration file) lies under the document root"));
    assert!(warnings[1].contains("(auth[1].htpasswd) lies under the document root"));
}
