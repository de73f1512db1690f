// Reads the BI views through pgjdbc (the driver of Metabase, DBeaver and Tableau's JDBC path) and
// prints what the driver reports, one tab-separated line per fact, for test/integration/bi-driver-jdbc.test.ts:
//   COLUMN  view  column  typeName  precision  scale        (ResultSetMetaData)
//   VALUE   view  row     column    value|\N               (getBigDecimal for numeric, getString otherwise)
//   REMARKS view  column  remarks                          (DatabaseMetaData.getColumns; column "" = the view)
// Run as a single-file program (the password comes from PGPASSWORD, not the command line):
//   java -cp /usr/share/java/postgresql.jar BiJdbc.java JDBC_URL USER SCHEMA
import java.math.BigDecimal;
import java.sql.*;

public class BiJdbc {
    static final String[][] VIEWS = {
        {"reconciliation", "id"},
        {"reconciliation_history", "id, valid_from"},
        {"sync_freshness", "1"},
        {"run_profiles", "run_id, field"},
        {"run_checks", "run_id, check_name"},
    };

    public static void main(String[] args) throws Exception {
        String url = args[0], user = args[1], schema = args[2];
        String password = System.getenv().getOrDefault("PGPASSWORD", "");
        try (Connection conn = DriverManager.getConnection(url, user, password)) {
            DatabaseMetaData meta = conn.getMetaData();
            for (String[] view : VIEWS) {
                String name = view[0];
                String sql = "SELECT * FROM \"" + schema + "\"." + name + " ORDER BY " + view[1];
                try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
                    ResultSetMetaData md = rs.getMetaData();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        out("COLUMN", name, md.getColumnName(i), md.getColumnTypeName(i),
                            String.valueOf(md.getPrecision(i)), String.valueOf(md.getScale(i)));
                    }
                    int row = 0;
                    while (rs.next()) {
                        for (int i = 1; i <= md.getColumnCount(); i++) {
                            String value;
                            if (md.getColumnType(i) == Types.NUMERIC || md.getColumnType(i) == Types.DECIMAL) {
                                BigDecimal d = rs.getBigDecimal(i);
                                value = d == null ? null : d.toPlainString();
                            } else {
                                value = rs.getString(i);
                            }
                            out("VALUE", name, String.valueOf(row), md.getColumnName(i), value == null ? "\\N" : value);
                        }
                        row++;
                    }
                }
                try (ResultSet rs = meta.getTables(null, schema, name, null)) {
                    while (rs.next()) out("REMARKS", name, "", String.valueOf(rs.getString("REMARKS")));
                }
                try (ResultSet rs = meta.getColumns(null, schema, name, null)) {
                    while (rs.next()) {
                        out("REMARKS", name, rs.getString("COLUMN_NAME"), String.valueOf(rs.getString("REMARKS")));
                    }
                }
            }
        }
    }

    static void out(String... fields) {
        StringBuilder line = new StringBuilder();
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) line.append('\t');
            line.append(fields[i].replace('\t', ' ').replace('\n', ' '));
        }
        System.out.println(line);
    }
}
