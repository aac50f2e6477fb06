<?php
/**
 * authcount - the plain-file authentication of DokuWiki (authplain), with
 * one line per password check appended to DOKU_CONF/checks.log: the
 * user name as DokuWiki looks it up, hex-encoded.  Suspect's recipe test
 * counts these lines to see how many guesses reached the wiki.
 */
if (!defined('DOKU_INC')) die();

class auth_plugin_authcount extends auth_plugin_authplain
{
    public function checkPass($user, $pass)
    {
        file_put_contents(DOKU_CONF . 'checks.log', bin2hex($user) . "\n",
                          FILE_APPEND | LOCK_EX);
        return parent::checkPass($user, $pass);
    }
}
