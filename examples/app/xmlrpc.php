<?php
/*
 * xmlrpc.php - an XML-RPC endpoint that checks passwords the way
 * WordPress's xmlrpc.php does, for suspect-fcgi to count each call
 * (examples/suspect-login.xml, docs/suspect-xml.md "XML-RPC and JSON
 * bodies").
 *
 * The methods take the account where WordPress's do:
 *   wp.getUsersBlogs(username, password)
 *   wp.*(blog_id, username, password, ...)
 *   metaWeblog.*(blogid, username, password, ...)
 *   blogger.getUsersBlogs, blogger.getUserInfo(appkey, username, password)
 *   blogger.*(appkey, blogid, username, password, ...)
 *   mt.*(blogid, username, password, ...)
 * pingback.ping, system.listMethods and demo.sayHello check no password;
 * system.multicall runs each call it carries (one inside it is a fault,
 * as in WordPress).  Every call is checked: WordPress since 4.4 stops
 * checking within a multicall after its first failure, this endpoint
 * does not, as older versions and most XML-RPC servers do not, so a test
 * measures what Suspect lets through.
 *
 * Accounts as login.php: alice "correct horse", bob "battery staple".
 * Every password it checks is appended to attempts.log beside it
 * ("xmlrpc fail alice").  It knows nothing about rate limits.
 */

$ACCOUNTS = ['alice' => 'correct horse', 'bob' => 'battery staple'];

function attempt_log($ok, $user)
{
    file_put_contents(__DIR__ . '/attempts.log',
                      sprintf("xmlrpc %s %s\n", $ok ? 'ok' : 'fail',
                              preg_replace('/[^A-Za-z0-9_.-]/', '?', $user)),
                      FILE_APPEND | LOCK_EX);
}

/* The place (1-based) of the username in a method's parameters, 0 for a
 * method that takes none. */
function user_place($m)
{
    if ($m === 'wp.getUsersBlogs') {
        return 1;
    }
    if ($m === 'blogger.getUsersBlogs' || $m === 'blogger.getUserInfo') {
        return 2;
    }
    foreach (['wp.' => 2, 'metaWeblog.' => 2, 'blogger.' => 3,
              'mt.' => 2] as $prefix => $place) {
        if (strncmp($m, $prefix, strlen($prefix)) === 0) {
            return $place;
        }
    }
    return 0;
}

/* An XML-RPC <value> as PHP data, as IXR reads it. */
function value_of($v)
{
    $kids = $v->children();
    if (count($kids) === 0) {
        return (string)$v;
    }
    $k = $kids[0];
    switch ($k->getName()) {
    case 'int':
    case 'i4':
        return (int)trim((string)$k);
    case 'double':
        return (float)trim((string)$k);
    case 'boolean':
        return trim((string)$k) === '1';
    case 'base64':
        return base64_decode((string)$k);
    case 'nil':
        return null;
    case 'struct':
        $out = [];
        foreach ($k->member as $m) {
            $out[(string)$m->name] = value_of($m->value);
        }
        return $out;
    case 'array':
        $out = [];
        foreach ($k->data->value as $e) {
            $out[] = value_of($e);
        }
        return $out;
    default:
        return (string)$k;
    }
}

function fault($code, $text)
{
    return ['faultCode' => $code, 'faultString' => $text];
}

function call($m, $params)
{
    global $ACCOUNTS;

    if ($m === 'system.multicall') {
        $out = [];
        foreach ((array)($params[0] ?? []) as $c) {
            $name = (string)($c['methodName'] ?? '');
            $out[] = $name === 'system.multicall'
                         ? fault(-32600, 'Recursive calls to system.multicall are forbidden.')
                         : call($name, (array)($c['params'] ?? []));
        }
        return $out;
    }
    if (in_array($m, ['pingback.ping', 'system.listMethods', 'demo.sayHello'],
                 true)) {
        return 'Hello!';
    }
    $place = user_place($m);
    if ($place === 0) {
        return fault(-32601, "server error. requested method $m does not exist.");
    }
    $user = (string)($params[$place - 1] ?? '');
    $pass = (string)($params[$place] ?? '');
    if ($user === '') {
        return fault(403, 'Incorrect username or password.');
    }
    $ok = isset($ACCOUNTS[$user]) && hash_equals($ACCOUNTS[$user], $pass);
    attempt_log($ok, $user);
    return $ok ? [['blogid' => '1', 'blogName' => 'Example']]
               : fault(403, 'Incorrect username or password.');
}

/* PHP data as an XML-RPC <value>. */
function value_xml($v)
{
    if (is_array($v) && array_is_list($v)) {
        return '<value><array><data>' . implode('', array_map('value_xml', $v))
               . '</data></array></value>';
    }
    if (is_array($v)) {
        $s = '';
        foreach ($v as $k => $e) {
            $s .= '<member><name>' . htmlspecialchars($k) . '</name>'
                  . value_xml($e) . '</member>';
        }
        return "<value><struct>$s</struct></value>";
    }
    if (is_int($v)) {
        return "<value><int>$v</int></value>";
    }
    return '<value><string>' . htmlspecialchars((string)$v) . '</string></value>';
}

header('Content-Type: text/xml; charset=utf-8');
if ($_SERVER['REQUEST_METHOD'] !== 'POST') {
    header('Status: 405 Method Not Allowed');
    echo "XML-RPC server accepts POST requests only.\n";
    exit(0);
}
$doc = simplexml_load_string(file_get_contents('php://input'), 'SimpleXMLElement',
                             LIBXML_NONET);
if ($doc === false || $doc->getName() !== 'methodCall') {
    echo '<?xml version="1.0"?><methodResponse><fault>',
         value_xml(fault(-32700, 'parse error. not well formed')),
         "</fault></methodResponse>\n";
    exit(0);
}
$params = [];
foreach ($doc->params->param ?? [] as $p) {
    $params[] = value_of($p->value);
}
$r = call(trim((string)$doc->methodName), $params);
echo '<?xml version="1.0"?><methodResponse>';
if (is_array($r) && isset($r['faultCode'])) {
    echo '<fault>', value_xml($r), '</fault>';
} else {
    echo '<params><param>', value_xml($r), '</param></params>';
}
echo "</methodResponse>\n";
