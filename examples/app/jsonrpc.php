<?php
/*
 * jsonrpc.php - a JSON-RPC 2.0 endpoint whose "login" method checks a
 * password, for suspect-fcgi to count each call of a batch
 * (examples/suspect-login.xml, docs/suspect-xml.md "XML-RPC and JSON
 * bodies").
 *
 *   {"jsonrpc":"2.0","method":"login",
 *    "params":{"username":"alice","password":"..."},"id":1}
 * or an array of such calls (a batch), each run.  It reads the body with
 * json_decode() whatever its Content-Type, as most such endpoints do.
 *
 * Accounts as login.php: alice "correct horse", bob "battery staple".
 * Every password it checks is appended to attempts.log beside it
 * ("jsonrpc fail alice").  It knows nothing about rate limits.
 */

$ACCOUNTS = ['alice' => 'correct horse', 'bob' => 'battery staple'];

function attempt_log($ok, $user)
{
    file_put_contents(__DIR__ . '/attempts.log',
                      sprintf("jsonrpc %s %s\n", $ok ? 'ok' : 'fail',
                              preg_replace('/[^A-Za-z0-9_.-]/', '?', $user)),
                      FILE_APPEND | LOCK_EX);
}

function run($c)
{
    global $ACCOUNTS;

    $id = is_array($c) ? ($c['id'] ?? null) : null;
    if (!is_array($c) || ($c['method'] ?? '') !== 'login') {
        return ['jsonrpc' => '2.0', 'id' => $id,
                'error' => ['code' => -32601, 'message' => 'Method not found']];
    }
    $user = (string)($c['params']['username'] ?? '');
    $pass = (string)($c['params']['password'] ?? '');
    if ($user === '') {
        return ['jsonrpc' => '2.0', 'id' => $id,
                'error' => ['code' => -32602, 'message' => 'Invalid params']];
    }
    $ok = isset($ACCOUNTS[$user]) && hash_equals($ACCOUNTS[$user], $pass);
    attempt_log($ok, $user);
    return $ok ? ['jsonrpc' => '2.0', 'id' => $id, 'result' => 'Welcome']
               : ['jsonrpc' => '2.0', 'id' => $id,
                  'error' => ['code' => 1, 'message' => 'Invalid password']];
}

header('Content-Type: application/json');
$req = json_decode(file_get_contents('php://input'), true);
if (!is_array($req)) {
    echo json_encode(['jsonrpc' => '2.0', 'id' => null,
                      'error' => ['code' => -32700, 'message' => 'Parse error']]),
         "\n";
    exit(0);
}
echo json_encode(array_is_list($req) && $req !== [] ? array_map('run', $req)
                                                    : run($req)), "\n";
