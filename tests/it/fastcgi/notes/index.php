<?php
// Notes: a small PHP application for brisk's FastCGI tests. One front
// controller (brisk's `fallback`) behind pretty URLs; a login kept in the
// session (a cookie); notes and attachments stored as files beneath
// NOTES_DIR (a parameter of the rule); no database.

session_start();
$dir = $_SERVER['NOTES_DIR'];
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
$post = $_SERVER['REQUEST_METHOD'] === 'POST';
$user = $_SESSION['user'] ?? null;

function e(string $s): string
{
    return htmlspecialchars($s, ENT_QUOTES);
}

function page(string $title, string $body, int $status = 200): void
{
    http_response_code($status);
    echo "<!doctype html>\n<title>", e($title), "</title>\n",
        "<link rel=stylesheet href=/style.css>\n<h1>", e($title), "</h1>\n", $body, "\n";
}

// After a POST, the answer is a redirect to what it made (303: the
// client asks for it with GET).
function see(string $to): void
{
    header('Location: ' . $to, true, 303);
}

function notes(string $dir): array
{
    $file = "$dir/notes.json";
    return is_file($file) ? json_decode(file_get_contents($file), true) : [];
}

if ($path === '/' && !$post) {
    if ($user === null) {
        page('Notes', '<p><a href=/login>Log in</a> to write notes.</p>');
        return;
    }
    $list = '';
    foreach (notes($dir) as $id => $n) {
        $list .= "<li><a href=/notes/$id>" . e($n['text']) . '</a> by ' . e($n['by']) . "</li>\n";
    }
    page('Notes', '<p>Hello, ' . e($user) . "</p>\n<ul>\n$list</ul>\n"
        . "<form method=post action=/notes><textarea name=text></textarea><button>Add</button></form>\n"
        . "<form method=post action=/upload enctype=multipart/form-data>"
        . "<input type=file name=attachment><button>Upload</button></form>");
} elseif ($path === '/login' && !$post) {
    page('Log in', '<form method=post action=/login><input name=user>'
        . '<input name=password type=password><button>Log in</button></form>');
} elseif ($path === '/login') {
    if (($_POST['user'] ?? '') === '' || ($_POST['password'] ?? '') !== 'open sesame') {
        page('Log in', '<p>Wrong name or password.</p>', 403);
        return;
    }
    session_regenerate_id(true);
    $_SESSION['user'] = $_POST['user'];
    see('/');
} elseif ($path === '/logout') {
    $_SESSION = [];
    session_destroy();
    see('/');
} elseif ($post && $user === null) {
    see('/login');
} elseif ($path === '/notes' && $post) {
    $all = notes($dir);
    $id = count($all) + 1;
    $all[$id] = ['text' => $_POST['text'] ?? '', 'by' => $user];
    file_put_contents("$dir/notes.json", json_encode($all), LOCK_EX);
    see("/notes/$id");
} elseif (preg_match('#^/notes/(\d+)$#', $path, $m)) {
    $n = notes($dir)[$m[1]] ?? null;
    if ($n === null) {
        page('Not found', '<p>There is no note ' . e($m[1]) . '.</p>', 404);
        return;
    }
    page("Note $m[1]", '<p>' . e($n['text']) . '</p><p>by ' . e($n['by']) . '</p>');
} elseif ($path === '/upload' && $post) {
    $f = $_FILES['attachment'] ?? null;
    $name = basename($f['name'] ?? '');
    if ($f === null || $f['error'] !== UPLOAD_ERR_OK || !preg_match('/^[\w.-]+$/', $name)) {
        page('Upload', '<p>No file, or a name that will not do.</p>', 400);
        return;
    }
    move_uploaded_file($f['tmp_name'], "$dir/files/$name");
    see('/files/' . $name);
} elseif (preg_match('#^/files/([\w.-]+)$#', $path, $m) && is_file("$dir/files/$m[1]")) {
    header('Content-Type: application/octet-stream');
    header('X-Sha256: ' . hash_file('sha256', "$dir/files/$m[1]"));
    readfile("$dir/files/$m[1]");
} else {
    page('Not found', '<p>No page at ' . e($path) . '.</p>', 404);
}
